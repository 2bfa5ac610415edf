        files = labelled(by_class, sets, classes, root, "test")
