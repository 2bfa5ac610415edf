    return [*cfg.categorical, *categorical]
