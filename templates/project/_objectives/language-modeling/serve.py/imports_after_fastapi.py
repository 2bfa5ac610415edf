from pydantic import BaseModel, Field, ValidationError
from starlette.responses import StreamingResponse
