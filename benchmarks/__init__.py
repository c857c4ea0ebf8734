"""`searchtrace bench <name>`: each module here holds one benchmark's click `command`, measured as ratios."""
