sweep
