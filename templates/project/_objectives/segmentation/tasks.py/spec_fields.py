    ignore_index: int = 255  # mask value of unlabelled pixels: no loss, not scored
