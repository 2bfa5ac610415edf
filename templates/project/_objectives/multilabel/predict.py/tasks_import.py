from .tasks import Task
