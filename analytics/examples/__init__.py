"""Example custom metrics for `searchtrace report --metric FILE` (copy one and edit it)."""
