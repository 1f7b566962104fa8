"""The config file: its model at the bottom, then values, schema, document checks and load."""
