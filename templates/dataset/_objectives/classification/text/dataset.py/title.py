"""{{ name }}: labelled text for sequence classification (ptgen dataset kind "text").
