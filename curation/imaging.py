"""Decode, validate and hash one image file, from a single decode.

Hash representation (used everywhere in benchforge):
    pHash and dHash are 64-bit values stored as *signed* 64-bit integers so they fit a
    database BIGINT. ``to_signed``/``to_unsigned`` convert; ``hash_to_hex`` gives the same
    16-character string as ``str(imagehash.phash(...))`` and ``hex_to_hash`` parses it back.
    Hamming distance does not care about the sign: the near-duplicate index views the same
    bits as uint64.

pHash is bit-compatible with ``imagehash.phash`` (grayscale, LANCZOS to 32x32, 2-D DCT-II,
top-left 8x8 block compared with its median, row-major, most significant bit first). The
DCT is a precomputed 8x32 cosine matrix: the unnormalised scipy DCT differs only by a
constant factor, which the median comparison ignores. JPEGs are decoded with libjpeg's DCT
scaling (``Image.draft``) at the smallest size that still keeps the hash within a few bits
of a full decode, which is what makes hashing several times faster than imagehash.
"""

from __future__ import annotations

import hashlib
import io
import math
import warnings
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

# Pillow format name -> canonical format and file extension we store under.
ALLOWED_FORMATS: dict[str, tuple[str, str]] = {
    "JPEG": ("jpeg", "jpg"),
    "MPO": ("jpeg", "jpg"),  # camera JPEGs with a second (depth/preview) frame
    "PNG": ("png", "png"),
    "WEBP": ("webp", "webp"),
    "GIF": ("gif", "gif"),
    "BMP": ("bmp", "bmp"),
    "TIFF": ("tiff", "tif"),
}

# JPEGs are decoded at a reduced size whose shorter side is at least this many pixels
# (libjpeg scales by 1/2, 1/4 or 1/8 while decoding). 64 keeps pHash as close to imagehash's
# full decode as 128 did (same share identical, never more than 2 bits apart over 400
# photo-like JPEGs of five sizes) and allows 1/8 scaling for ordinary photos, where only the
# entropy decoding is left to pay for; bench/ingest.py measures speed and agreement.
HASH_DRAFT_PX = 64

# Plugins Pillow may try; the JPEG opener itself returns MPO files.
_OPENERS = [name for name in ALLOWED_FORMATS if name != "MPO"]

_EXIF_ORIENTATION = 0x0112
_SWAPS_AXES = {5, 6, 7, 8}


class ImageRejected(ValueError):
    """The file cannot become a benchmark image; ``code`` is stable, ``message`` is for people."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def __reduce__(self):  # travels back from ingest's worker processes
        return type(self), (self.code, self.message)


@dataclass(frozen=True)
class ImageLimits:
    max_bytes: int = 50 * 1024 * 1024
    max_pixels: int = 100_000_000  # decompression-bomb limit (a 180 MP PNG can be 175 KB)
    max_side: int = 30_000
    min_short_edge: int = 512  # below this the image is kept but flagged low-resolution


DEFAULT_LIMITS = ImageLimits()


@dataclass(frozen=True)
class ImageAnalysis:
    md5: str
    sha256: str
    phash: int  # signed 64-bit, see module docstring
    dhash: int
    width: int  # displayed size, after EXIF orientation
    height: int
    format: str  # jpeg | png | webp | gif | bmp | tiff
    extension: str
    animated: bool
    low_resolution: bool
    # A small JPEG when requested; None as well when the file itself serves as its thumbnail
    # (see _serves_as_thumbnail): then there is nothing smaller or plainer to make.
    thumbnail: bytes | None = None

    @property
    def phash_hex(self) -> str:
        return hash_to_hex(self.phash)

    @property
    def dhash_hex(self) -> str:
        return hash_to_hex(self.dhash)


# ---- hash value conversions -------------------------------------------------------------


def to_signed(value: int) -> int:
    value &= 0xFFFF_FFFF_FFFF_FFFF
    return value - (1 << 64) if value >= (1 << 63) else value


def to_unsigned(value: int) -> int:
    return value & 0xFFFF_FFFF_FFFF_FFFF


def hash_to_hex(value: int) -> str:
    return f"{to_unsigned(value):016x}"


def hex_to_hash(text: str) -> int:
    """Parse a 16-hex-digit hash (as written by imagehash) into our signed form."""
    cleaned = text.strip().lower()
    if cleaned.startswith("0x"):
        cleaned = cleaned[2:]
    if len(cleaned) != 16 or any(c not in "0123456789abcdef" for c in cleaned):
        raise ValueError(f"{text!r} is not a 64-bit hash: expected 16 hexadecimal digits")
    return to_signed(int(cleaned, 16))


def hamming(a: int, b: int) -> int:
    return (to_unsigned(a) ^ to_unsigned(b)).bit_count()


# ---- perceptual hashes ------------------------------------------------------------------


def _dct_matrix(n: int = 32, keep: int = 8) -> np.ndarray:
    k = np.arange(keep)[:, None]
    x = np.arange(n)[None, :]
    return np.cos(np.pi * k * (2 * x + 1) / (2 * n))


_DCT_8x32 = _dct_matrix()
_BIT_WEIGHTS = (1 << np.arange(63, -1, -1, dtype=np.uint64)).astype(np.uint64)


def _bits_to_int(bits: np.ndarray) -> int:
    packed = int(np.bitwise_or.reduce(_BIT_WEIGHTS[bits.ravel()]))
    return to_signed(packed)


def phash_of_gray(gray: Image.Image) -> int:
    """64-bit pHash of an 'L' image, bit-compatible with imagehash.phash."""
    pixels = np.asarray(gray.resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    low = (_DCT_8x32 @ pixels @ _DCT_8x32.T).ravel()  # rows: vertical frequency, as scipy's axis-0 DCT
    middle = np.partition(low, (31, 32))  # the median of 64 values, without np.median's overhead
    return _bits_to_int(low > (middle[31] + middle[32]) / 2)


def dhash_of_gray(gray: Image.Image) -> int:
    """64-bit horizontal-gradient dHash of an 'L' image (imagehash.dhash's layout).

    A box pre-reduction (reducing_gap) halves the cost; dHash lists are only ever compared
    with dHashes we computed ourselves, so bit-compatibility with imagehash is not needed.
    """
    pixels = np.asarray(gray.resize((9, 8), Image.Resampling.LANCZOS, reducing_gap=2.0), dtype=np.int16)
    return _bits_to_int(pixels[:, 1:] > pixels[:, :-1])


# ---- decoding ---------------------------------------------------------------------------


def _sixteen_bit_to_gray(img: Image.Image) -> Image.Image:
    # Pillow's own I;16 -> L conversion clips at 255 (a white image); scale instead.
    arr = np.asarray(img)
    if img.mode == "F":
        top = 1.0 if float(arr.max(initial=0.0)) <= 1.0 else 65535.0
    else:
        top = 255.0 if int(arr.max(initial=0)) <= 255 and img.mode == "I" else 65535.0
    scaled = np.clip(arr.astype(np.float64) * (255.0 / top), 0, 255).round().astype(np.uint8)
    return Image.fromarray(scaled, mode="L")


def _on_white(img: Image.Image) -> Image.Image:
    rgba = img.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    background.alpha_composite(rgba)
    return background.convert("RGB")


def normalise_mode(img: Image.Image) -> Image.Image:
    """Return an 'RGB' or 'L' image: alpha on white, CMYK/palette/16-bit converted."""
    mode = img.mode
    if mode in ("RGB", "L"):
        return img
    if mode.startswith("I") or mode == "F":
        return _sixteen_bit_to_gray(img)
    if mode == "1":
        return img.convert("L")
    if mode == "P":
        has_alpha = "transparency" in img.info or img.palette.mode == "RGBA"
        return _on_white(img) if has_alpha else img.convert("RGB")
    if mode in ("RGBA", "LA", "La", "PA", "RGBa"):
        return _on_white(img)
    return img.convert("RGB")  # CMYK, YCbCr, LAB, HSV


def _open(data: bytes, limits: ImageLimits) -> Image.Image:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data), formats=_OPENERS)
    except Image.DecompressionBombError:
        raise ImageRejected(
            "too_many_pixels",
            f"The image has more than {limits.max_pixels:,} pixels (decompression-bomb limit); resize it before uploading.",
        ) from None
    except UnidentifiedImageError:
        raise ImageRejected(
            "not_an_image",
            "Not a readable image: the content is not JPEG, PNG, WebP, GIF, BMP or TIFF (the file extension is ignored).",
        ) from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise ImageRejected("corrupt", f"The image header is damaged and cannot be read ({exc}).") from None
    if img.format not in ALLOWED_FORMATS:  # defensive: formats= already restricts plugins
        raise ImageRejected("format_not_allowed", f"Format {img.format} is not accepted.")
    return img


def _check_size(width: int, height: int, limits: ImageLimits) -> None:
    if width <= 0 or height <= 0:
        raise ImageRejected("corrupt", "The image reports an empty size.")
    if width * height > limits.max_pixels:
        raise ImageRejected(
            "too_many_pixels",
            f"The image is {width}x{height} = {width * height:,} pixels, above the "
            f"{limits.max_pixels:,}-pixel limit that protects against decompression bombs; "
            "resize it before uploading.",
        )
    if max(width, height) > limits.max_side:
        raise ImageRejected(
            "too_large",
            f"The image is {width}x{height}; the longest side may be at most {limits.max_side:,} pixels.",
        )


def _load(img: Image.Image) -> None:
    if ImageFile.LOAD_TRUNCATED_IMAGES:  # never accept half an image silently
        raise RuntimeError("PIL.ImageFile.LOAD_TRUNCATED_IMAGES must stay False")
    try:
        img.load()
    except OSError as exc:
        if "truncated" in str(exc).lower():
            raise ImageRejected(
                "truncated",
                "The image file is truncated (it ends before the picture data does); download or export it again.",
            ) from None
        raise ImageRejected("corrupt", f"The image data is damaged and cannot be decoded ({exc}).") from None
    except (SyntaxError, ValueError, EOFError) as exc:
        raise ImageRejected("corrupt", f"The image data is damaged and cannot be decoded ({exc}).") from None


def make_thumbnail(img: Image.Image, size: int, quality: int = 80) -> bytes:
    thumb = img.copy()
    thumb.thumbnail((size, size), Image.Resampling.LANCZOS, reducing_gap=2.0)
    out = io.BytesIO()
    thumb.save(out, "JPEG", quality=quality, optimize=False)
    return out.getvalue()


@dataclass
class _Decoded:
    picture: Image.Image  # 'RGB' or 'L', upright, possibly reduced (JPEG draft)
    format: str
    extension: str
    width: int  # full displayed size
    height: int
    animated: bool
    plain: bool  # 8-bit RGB or grey, opaque, upright as stored: browsers show it as we would


def _serves_as_thumbnail(decoded: "_Decoded", size: int) -> bool:
    """Whether a file can be its own thumbnail: a plain still JPEG or PNG no larger than the
    thumbnail. Writing a re-encoded copy of it would only cost a decode, an encode and a file."""
    return (
        decoded.plain
        and not decoded.animated
        and decoded.format in ("jpeg", "png")
        and max(decoded.width, decoded.height) <= size
    )


def _draft_request(width: int, height: int, thumbnail_size: int | None) -> tuple[int, int]:
    need_w = need_h = HASH_DRAFT_PX
    if thumbnail_size:
        longest = max(width, height)
        need_w = max(need_w, math.ceil(thumbnail_size * width / longest))
        need_h = max(need_h, math.ceil(thumbnail_size * height / longest))
    return need_w, need_h


def _decode(data: bytes, limits: ImageLimits, thumbnail_size: int | None) -> _Decoded:
    if not data:
        raise ImageRejected("empty", "The file is empty (0 bytes).")
    if len(data) > limits.max_bytes:
        raise ImageRejected(
            "file_too_big",
            f"The file is {len(data) / 1e6:.1f} MB; the limit is {limits.max_bytes / 1e6:.0f} MB.",
        )
    # In-memory source: nothing to close, and the decoded picture outlives this function.
    img = _open(data, limits)
    fmt, ext = ALLOWED_FORMATS[img.format]
    width, height = img.size
    _check_size(width, height, limits)
    # The first frame is what we hash and show. (MPO's second frame is a preview, not animation.)
    animated = fmt != "jpeg" and bool(getattr(img, "is_animated", False))
    if fmt == "jpeg":
        # Grayscale output skips colour conversion when no colour thumbnail is needed.
        img.draft("L" if thumbnail_size is None else None, _draft_request(width, height, thumbnail_size))
    _load(img)
    orientation = img.getexif().get(_EXIF_ORIENTATION)
    if orientation in _SWAPS_AXES:
        width, height = height, width
    plain = img.mode in ("RGB", "L") and "transparency" not in img.info and orientation in (None, 1)
    ImageOps.exif_transpose(img, in_place=True)
    picture = normalise_mode(img)
    return _Decoded(picture, fmt, ext, width, height, animated, plain)


def perceptual_hashes(data: bytes, *, limits: ImageLimits = DEFAULT_LIMITS) -> tuple[int, int]:
    """(pHash, dHash) of an image file, from one (reduced) decode."""
    decoded = _decode(data, limits, None)
    gray = decoded.picture if decoded.picture.mode == "L" else decoded.picture.convert("L")
    return phash_of_gray(gray), dhash_of_gray(gray)


def analyse_image(
    data: bytes,
    *,
    limits: ImageLimits = DEFAULT_LIMITS,
    thumbnail_size: int | None = None,
) -> ImageAnalysis:
    """Validate ``data`` as an image and compute every hash from one decode.

    Raises ImageRejected with a clear message for anything that is not a usable image.
    ``thumbnail_size`` (longest side in px) also returns a small JPEG made from the same decode,
    unless the file can serve as its own thumbnail (_serves_as_thumbnail; thumbnail is None).
    """
    decoded = _decode(data, limits, thumbnail_size)
    own = bool(thumbnail_size) and _serves_as_thumbnail(decoded, thumbnail_size)
    picture = decoded.picture
    gray = picture if picture.mode == "L" else picture.convert("L")
    return ImageAnalysis(
        md5=hashlib.md5(data).hexdigest(),
        sha256=hashlib.sha256(data).hexdigest(),
        phash=phash_of_gray(gray),
        dhash=dhash_of_gray(gray),
        width=decoded.width,
        height=decoded.height,
        format=decoded.format,
        extension=decoded.extension,
        animated=decoded.animated,
        low_resolution=min(decoded.width, decoded.height) < limits.min_short_edge,
        thumbnail=make_thumbnail(picture, thumbnail_size) if thumbnail_size and not own else None,
    )


__all__ = [
    "ALLOWED_FORMATS",
    "DEFAULT_LIMITS",
    "ImageAnalysis",
    "ImageLimits",
    "ImageRejected",
    "analyse_image",
    "dhash_of_gray",
    "hamming",
    "hash_to_hex",
    "hex_to_hash",
    "make_thumbnail",
    "normalise_mode",
    "perceptual_hashes",
    "phash_of_gray",
    "to_signed",
    "to_unsigned",
]
