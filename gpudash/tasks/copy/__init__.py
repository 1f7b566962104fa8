"""The copy task: its params, the scripts on both hosts, the transfer."""
