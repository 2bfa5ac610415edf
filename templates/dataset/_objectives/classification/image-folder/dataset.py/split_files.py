    classes = list(state["classes"]) if state else sorted(train_by_class)
    train_files = labelled(train_by_class, classes, "train")
    val_files = labelled(val_by_class, classes, "val")
