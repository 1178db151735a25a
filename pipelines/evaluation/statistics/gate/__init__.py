"""The regression gate: its rule per metric (rule.py), what a pass can hide (sensitivity.py), which
earlier runs a run is compared with (run_gate.py) and how its false-alarm level is shared between
them (level.py)."""
