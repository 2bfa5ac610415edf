    names = classes_of(train_split, target, kept)  # a label that is not classes: an error
