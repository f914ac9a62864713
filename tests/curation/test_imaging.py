"""Decoding, validation and hashing of single image files (curation.imaging)."""

import io

import imagehash
import numpy as np
import pytest
from PIL import Image, ImageDraw

from curation.imaging import (
    ImageLimits,
    ImageRejected,
    analyse_image,
    hamming,
    hash_to_hex,
    hex_to_hash,
    perceptual_hashes,
    to_signed,
    to_unsigned,
)
from tests.factories import encode, photo, png_header_only


def reference_phash(img):
    return hex_to_hash(str(imagehash.phash(img)))


def rejected(data, code, **kwargs):
    with pytest.raises(ImageRejected) as info:
        analyse_image(data, **kwargs)
    assert info.value.code == code
    assert info.value.message  # a sentence a person can act on
    return info.value


# ---- hash conversions -------------------------------------------------------------------


def test_signed_storage_round_trips_and_matches_imagehash_hex():
    for value in (0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1, 0x8F3A_0000_1234_ABCD):
        signed = to_signed(value)
        assert -(1 << 63) <= signed < (1 << 63)
        assert to_unsigned(signed) == value
        assert hex_to_hash(hash_to_hex(signed)) == signed
    assert hash_to_hex(-1) == "ffffffffffffffff"
    assert hamming(to_signed(0xFFFF_FFFF_FFFF_FFFF), 0) == 64


@pytest.mark.parametrize("bad", ["", "abc", "zzzzzzzzzzzzzzzz", "0123456789abcdef0"])
def test_hex_parsing_rejects_what_is_not_a_64_bit_hash(bad):
    with pytest.raises(ValueError, match="16 hexadecimal digits"):
        hex_to_hash(bad)


# ---- hashing ----------------------------------------------------------------------------


def test_byte_digests_and_phash_match_the_reference_libraries():
    import hashlib

    img = photo()
    data = encode(img, "PNG")
    result = analyse_image(data)
    assert result.md5 == hashlib.md5(data).hexdigest()
    assert result.sha256 == hashlib.sha256(data).hexdigest()
    # PNG is decoded in full, so the pHash must equal imagehash's bit for bit.
    assert result.phash_hex == str(imagehash.phash(Image.open(io.BytesIO(data))))
    assert (result.width, result.height, result.format, result.extension) == (640, 480, "png", "png")


def test_jpeg_reduced_decode_stays_within_a_few_bits_of_imagehash():
    distances = []
    for seed in range(12):
        data = encode(photo((1600, 1200), seed), quality=90)
        ours, _ = perceptual_hashes(data)
        distances.append(hamming(ours, reference_phash(Image.open(io.BytesIO(data)))))
    assert max(distances) <= 4
    assert distances.count(0) >= 9


def test_dhash_and_phash_differ_between_different_pictures_and_agree_on_reencodes():
    a = analyse_image(encode(photo(seed=1), quality=95))
    a_again = analyse_image(encode(photo(seed=1), quality=70))
    b = analyse_image(encode(photo(seed=2), quality=95))
    assert a.md5 != a_again.md5
    assert hamming(a.phash, a_again.phash) <= 4
    assert hamming(a.dhash, a_again.dhash) <= 4
    assert hamming(a.phash, b.phash) > 10


def test_thumbnail_comes_from_the_same_decode_and_is_small():
    result = analyse_image(encode(photo((2000, 1000))), thumbnail_size=256)
    thumb = Image.open(io.BytesIO(result.thumbnail))
    assert thumb.format == "JPEG" and max(thumb.size) == 256 and thumb.size[1] == 128
    assert analyse_image(encode(photo())).thumbnail is None


def test_a_small_plain_file_is_its_own_thumbnail_and_anything_a_browser_would_show_differently_is_not():
    small = photo((200, 150))
    for own in (encode(small), encode(small, "PNG"), encode(small.convert("L"), "PNG"), encode(photo((256, 100)))):
        assert analyse_image(own, thumbnail_size=256).thumbnail is None
    rgba = small.convert("RGBA")
    exif = Image.Exif()
    exif[0x0112] = 6  # stored on its side
    needs_one = {
        "larger than the thumbnail": encode(photo((257, 100))),
        "transparent": encode(rgba, "PNG"),
        "palette": encode(small.convert("P"), "PNG"),
        "CMYK": encode(small.convert("CMYK")),
        "rotated by EXIF": encode(small, exif=exif),
        "not JPEG or PNG": encode(small, "WEBP"),
    }
    for what, data in needs_one.items():
        thumb = analyse_image(data, thumbnail_size=256).thumbnail
        assert thumb is not None and Image.open(io.BytesIO(thumb)).format == "JPEG", what


def test_low_resolution_is_flagged_not_rejected():
    small = analyse_image(encode(photo((600, 400))))
    assert small.low_resolution
    assert not analyse_image(encode(photo((800, 600)))).low_resolution
    assert not analyse_image(encode(photo((600, 400))), limits=ImageLimits(min_short_edge=300)).low_resolution


# ---- normalisation ----------------------------------------------------------------------


def test_exif_rotation_is_applied_before_hashing_and_size():
    upright = photo((640, 480), seed=3)
    stored_sideways = upright.transpose(Image.Transpose.ROTATE_90)  # what a phone writes
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display"
    data = encode(stored_sideways, exif=exif.tobytes(), quality=95)
    result = analyse_image(data)
    assert (result.width, result.height) == (640, 480)
    assert hamming(result.phash, analyse_image(encode(upright, quality=95)).phash) <= 4


def test_transparent_png_is_composited_on_white():
    rgba = Image.new("RGBA", (600, 600), (255, 0, 0, 0))  # fully transparent red
    ImageDraw.Draw(rgba).rectangle((0, 0, 299, 599), fill=(0, 0, 0, 255))
    white_bg = Image.new("RGB", (600, 600), "white")
    ImageDraw.Draw(white_bg).rectangle((0, 0, 299, 599), fill="black")
    result = analyse_image(encode(rgba, "PNG"), thumbnail_size=64)
    assert result.phash == analyse_image(encode(white_bg, "PNG")).phash
    thumb = Image.open(io.BytesIO(result.thumbnail)).convert("RGB")
    assert min(thumb.getpixel((60, 30))) > 240  # transparent area shows as white, not red/black


def test_cmyk_palette_and_16_bit_images_hash_like_their_rgb_versions():
    base = photo((600, 600), seed=4)
    rgb_hash = analyse_image(encode(base, "PNG")).phash
    cmyk = analyse_image(encode(base.convert("CMYK"), "JPEG", quality=95))
    assert cmyk.format == "jpeg" and hamming(cmyk.phash, rgb_hash) <= 6
    palette = analyse_image(encode(base.convert("P", palette=Image.Palette.ADAPTIVE), "PNG"))
    assert hamming(palette.phash, rgb_hash) <= 6

    gray8 = np.asarray(base.convert("L"), dtype=np.uint16)
    sixteen = Image.fromarray(gray8 * 257)  # uint16 -> mode I;16
    data16 = encode(sixteen, "PNG")
    assert Image.open(io.BytesIO(data16)).mode.startswith("I")
    result16 = analyse_image(data16, thumbnail_size=64)
    assert hamming(result16.phash, rgb_hash) <= 4  # not the all-white image a naive convert gives
    assert 20 < np.asarray(Image.open(io.BytesIO(result16.thumbnail))).mean() < 235


def test_animated_gif_uses_the_first_frame():
    first, second = photo((520, 520), seed=5), photo((520, 520), seed=6)
    data = encode(first.convert("P"), "GIF", save_all=True, append_images=[second.convert("P")], duration=100)
    result = analyse_image(data)
    assert result.animated and result.format == "gif"
    assert hamming(result.phash, analyse_image(encode(first.convert("P"), "GIF")).phash) == 0


@pytest.mark.parametrize("fmt, ext", [("WEBP", "webp"), ("BMP", "bmp"), ("TIFF", "tif")])
def test_other_allowed_formats(fmt, ext):
    result = analyse_image(encode(photo(), fmt))
    assert result.extension == ext and not result.animated


# ---- bad input --------------------------------------------------------------------------


def test_zero_byte_file():
    assert "empty" in rejected(b"", "empty").message


def test_not_an_image_even_with_an_image_name():
    rejected(b"%PDF-1.4 pretending to be photo.jpg" * 10, "not_an_image")
    rejected(b"GIF89a" + b"\x00" * 5, "not_an_image")


def test_truncated_jpeg():
    data = encode(photo((800, 600)), quality=90)
    err = rejected(data[: len(data) // 2], "truncated")
    assert "truncated" in err.message


def test_truncated_png():
    data = encode(photo((800, 600)), "PNG")
    rejected(data[: len(data) * 2 // 3], "truncated")


def test_decompression_bomb_is_refused_before_decoding():
    err = rejected(png_header_only(12_000, 12_000), "too_many_pixels")
    assert "144,000,000" in err.message
    # Above Pillow's own hard limit the open itself refuses; the message is still ours.
    rejected(png_header_only(30_000, 30_000), "too_many_pixels")


def test_huge_single_dimension():
    rejected(png_header_only(40_000, 100), "too_large")


def test_file_size_cap():
    rejected(encode(photo()), "file_too_big", limits=ImageLimits(max_bytes=1000))
