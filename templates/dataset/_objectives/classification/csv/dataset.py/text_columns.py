    return [*cfg.categorical, *categorical, target]
