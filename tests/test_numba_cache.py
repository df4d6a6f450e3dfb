"""engine/_numba.py: a change to any engine source drops the whole engine kernel cache."""

from engine._numba import _clear_stale_cache


def _cache_files(root):
    return sorted(p.name for p in root.rglob("*.nb*"))


def test_stale_cache_is_cleared_only_after_a_source_change(tmp_path):
    pkg = tmp_path / "engine"
    (pkg / "__pycache__").mkdir(parents=True)
    (pkg / "a.py").write_text("x = njit(1)\n")
    (pkg / "b.py").write_text("y = njit(2)\n")
    (pkg / "plots.py").write_text("z = 0\n")
    (pkg / "__pycache__" / "a.f-1.py311.nbi").write_bytes(b"index")
    (pkg / "__pycache__" / "a.f-1.py311.0.nbc").write_bytes(b"code")
    assert _clear_stale_cache(pkg, None) is True  # no stamp yet: start clean
    assert _cache_files(pkg) == []
    (pkg / "__pycache__" / "a.f-1.py311.nbi").write_bytes(b"index")
    assert _clear_stale_cache(pkg, None) is False  # unchanged sources keep the cache
    assert _cache_files(pkg) == ["a.f-1.py311.nbi"]
    (pkg / "plots.py").write_text("z = 1\n")  # a file without kernels: cache kept
    assert _clear_stale_cache(pkg, None) is False
    (pkg / "b.py").write_text("y = njit(3)\n")  # edit ANOTHER kernel file than the kernel's own
    assert _clear_stale_cache(pkg, None) is True
    assert _cache_files(pkg) == []


def test_separate_cache_dir_only_loses_engine_files(tmp_path):
    pkg = tmp_path / "src" / "engine"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("x = njit(1)\n")
    cache = tmp_path / "cache"
    (cache / "src_engine").mkdir(parents=True)
    (cache / "other_pkg").mkdir()
    (cache / "src_engine" / "a.f-1.nbi").write_bytes(b"i")
    (cache / "other_pkg" / "z.g-1.nbi").write_bytes(b"i")
    assert _clear_stale_cache(pkg, str(cache)) is True
    assert _cache_files(cache) == ["z.g-1.nbi"]
    assert (cache / "treelab-sources.sha256").exists()
