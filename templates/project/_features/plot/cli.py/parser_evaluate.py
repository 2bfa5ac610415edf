{% if objective == "classification" %}    evaluate.add_argument(
        "--output-dir",
        help="where report files go, e.g. the confusion matrix (default: beside --checkpoint)",
    )
{% endif %}
