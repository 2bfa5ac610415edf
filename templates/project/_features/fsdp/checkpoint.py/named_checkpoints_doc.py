    """out_dir/STEM.pt and STEM.dcp if there, newest first (resumed, a run may change strategy)."""
