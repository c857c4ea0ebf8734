"""The recording proxy (SPEC §15): any agent's search, fetch and chat calls recorded as trajectories of one run."""
