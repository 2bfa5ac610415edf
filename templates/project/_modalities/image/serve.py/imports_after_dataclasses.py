from io import BytesIO
