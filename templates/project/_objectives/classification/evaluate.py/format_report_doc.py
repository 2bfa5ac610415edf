{% if "plot" in features %}    """The result for reading: the metrics on one line, a line per class, the files written."""
{% else %}    """The result for reading: the metrics on one line, a line per class."""
{% endif %}
