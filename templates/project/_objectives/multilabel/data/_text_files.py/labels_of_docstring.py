        """The label cells of some rows of the file `name`."""
