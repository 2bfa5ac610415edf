from .models import unwrap
