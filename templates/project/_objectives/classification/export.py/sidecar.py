        "preprocessing": raw.preprocessing if raw else None,  # None: trained on synthetic data
