        files = labelled(by_class, classes, "test")
