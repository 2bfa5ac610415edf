{{ feature_parts("config.py", "validate_fsdp") | trim("\n") }}
