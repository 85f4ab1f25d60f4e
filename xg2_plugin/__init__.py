"""xg2_plugin: exact token masks for constrained decoding (work in progress)."""
