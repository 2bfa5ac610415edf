repeat cv
