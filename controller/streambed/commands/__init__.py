"""Implementations of the ``streambed`` commands (cli.py parses and dispatches)."""
