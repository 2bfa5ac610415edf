train.pos_weight=auto
