cv
