serve
