    serve = add("serve", "Serve the model over HTTP (FastAPI): /predict or /generate, batched.")
    serve.add_argument("--checkpoint", required=True, help="e.g. runs/default/best.pt")
    serve.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1: local only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--max-batch-size", type=int, default=32, help="inputs a forward (default 32)")
    serve.add_argument(
        "--max-wait-ms", type=float, default=5.0, help="a batch waits for more (default 5 ms)"
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=8 * 2**20, help="larger bodies get 413 (default 8 MiB)"
    )
    serve.add_argument("--max-inputs", type=int, default=64, help="inputs a request (default 64)")
