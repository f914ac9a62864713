"""benchforge scoring harness.

Pure Python (no Django): this package is copied into every frozen release and must run
anywhere with `python -m harness`. Provider SDKs (openai; zai-sdk or zhipuai for GLM) are
imported lazily.
"""

__version__ = "0.2.0"
