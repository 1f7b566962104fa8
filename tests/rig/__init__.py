"""The rig tier."""
