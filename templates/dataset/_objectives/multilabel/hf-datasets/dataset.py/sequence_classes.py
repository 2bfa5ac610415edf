        classes = label_set_names(train_split, label, kept)
