{% if objective == "classification" %}            from .evaluate import evaluate_checkpoint, format_report, write_reports

            result = evaluate_checkpoint(args.checkpoint, args.config, args.overrides, args.split)
            result.update(write_reports(result, args.checkpoint, args.output_dir))
{% else %}            from .evaluate import evaluate_checkpoint, format_report

            result = evaluate_checkpoint(args.checkpoint, args.config, args.overrides, args.split)
{% endif %}
