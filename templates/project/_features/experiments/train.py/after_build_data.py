    bundle = bundle.select(*fold) if fold else bundle
