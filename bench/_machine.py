"""Machine description printed under every benchmark table, and the memory readings of the
scaling benches (Linux ``/proc/self``)."""

import math
import os
import platform


def machine() -> str:
    """One line: CPU model, cores, memory, OS, Python and key package versions."""
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as fh:
            kb = int(fh.readline().split()[1])
            mem = f", {kb / 2**20:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    versions = []
    for mod in ("numba", "numpy", "sklearn", "streamlit"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except ImportError:
            pass
    return (
        f"{cpu}, {os.cpu_count()} cores{mem}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}; " + ", ".join(versions)
    )


def load_note() -> str:
    """The 1-, 5- and 15-minute load averages, e.g. ``'load 1.2 / 0.9 / 0.7'``."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load unknown"
    return f"load {one:.1f} / {five:.1f} / {fifteen:.1f}"


def status_mb(field: str) -> float:
    """A memory field of ``/proc/self/status`` (``'VmRSS:'``, ``'VmHWM:'``) in MiB; NaN
    where the field is missing (``OSError`` without the file)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field):
                return int(line.split()[1]) / 1024.0
    return math.nan


def reset_peak() -> float:
    """Reset the kernel's high-water mark (``VmHWM``); returns the resident set (MiB) now,
    NaN where the kernel refuses."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return status_mb("VmRSS:")
    except OSError:
        return math.nan
