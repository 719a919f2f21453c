"""`infertop serve`: the engine `replay` feeds, fed instead by HTTP clients through an
OpenAI-compatible API (uvicorn + Starlette). seam.py is what the HTTP app knows of the engine
(a dashboard attaching later talks through the same narrow seam); arrivals.py turns requests
into the serving loop's arrivals; engine_host.py runs the engine in its thread and answers
each request; app.py the endpoints; run.py the command's life: bind, warm, serve, drain, save."""
