"""Offline and online evaluation: system under test, metrics, statistics, report."""
