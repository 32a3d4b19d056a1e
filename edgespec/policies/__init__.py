"""Pure policy objects shared by the simulator and the real server (see interfaces.py)."""
