lr-find
