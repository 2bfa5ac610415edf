        return variable_length(train, val, spec, False)
