"""Partition Tree and Partition Forest: conditional density estimation (SPEC section 2)."""

from engine.partition import scans  # noqa: F401  (registers the scan warm-up)
