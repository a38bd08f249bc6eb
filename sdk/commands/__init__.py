"""Subcommands of ``tonk`` that ship with the SDK."""
