"""{{ name }}: texts with label sets, for multi-label tagging (ptgen dataset kind "text").
