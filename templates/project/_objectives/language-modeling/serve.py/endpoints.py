

MAX_SERVED_TOKENS = 1024  # one request's most: each token costs a forward pass
OUTPUTS = "POST /generate: the continuation of a prompt (text), streamed on request"


class GenerateRequest(BaseModel):
    """What POST /generate takes; the options mean what they mean to `generate`."""

    prompt: str = ""
    max_new_tokens: int = Field(200, ge=1, le=MAX_SERVED_TOKENS)
    temperature: float = Field(1.0, ge=0)
    top_k: int = Field(0, ge=0)
    seed: int = 0
    stream: bool = False


def add_routes(app: FastAPI, inference: Inference, limits: Limits) -> list[Batcher]:
    """POST /generate; each request draws its tokens in a thread of its own."""
    tokenizer = tokenizer_from_state(inference.state)
    block_size = inference.spec.block_size

    def pieces(asked: GenerateRequest) -> Iterator[str]:
        """The continuation as it is drawn, in whole characters."""
        prompt = tokenizer.encode(asked.prompt or "\n").long()  # (P,); none: a line start
        options = (asked.max_new_tokens, asked.temperature, asked.top_k, asked.seed)
        drawn = sample(inference.model, inference.precision, prompt[None, :], *options, block_size)
        pending: list[int] = []  # a character may need the next token
        for token in drawn:  # (1, 1) each
            pending.append(int(token))
            text = tokenizer.decode(pending)
            if not text.endswith("\ufffd"):  # U+FFFD: a character cut between two tokens
                yield text
                pending = []
        if pending:
            yield tokenizer.decode(pending)

    @app.post("/generate", response_model=None)
    async def generate(request: Request) -> StreamingResponse | dict[str, str]:
        body = await read_body(request, limits.max_body_bytes)
        try:
            payload = json.loads(body)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise BadInput(400, "body", f"not JSON: {exc}") from None
        try:
            asked = GenerateRequest.model_validate(payload)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "body"
            raise BadInput(422, field, first["msg"]) from None
        if asked.stream:  # Starlette runs a plain iterator in its thread pool
            return StreamingResponse(pieces(asked), media_type="text/plain; charset=utf-8")
        return {"text": "".join(await asyncio.to_thread(lambda: list(pieces(asked))))}

    return []
