import base64
