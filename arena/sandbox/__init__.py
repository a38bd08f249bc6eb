"""Running a bot the arena built from an upload, confined (floor 1: only arena's top level below)."""
