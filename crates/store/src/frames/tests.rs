use super::pipeline::AheadRule;
use super::*;

/// A frame as the visitor saw it, kept.
struct Frame {
    location: FrameLocation,
    text: Vec<u8>,
    complete: bool,
}

/// Every frame and the end.
struct Decoded {
    frames: Vec<Frame>,
    end: FramesEnd,
}

impl Decoded {
    fn text_of<'a>(&self, frame: &'a Frame) -> &'a [u8] {
        &frame.text
    }
}

fn decode_frames(data: &[u8]) -> io::Result<Decoded> {
    let mut frames = Vec::new();
    let end = visit_frames(data, |frame| {
        frames.push(Frame {
            location: frame.location,
            text: frame.text.to_vec(),
            complete: frame.complete,
        })
    })?;
    Ok(Decoded { frames, end })
}

fn file_of(frames: &[&[u8]]) -> Vec<u8> {
    frames
        .iter()
        .flat_map(|f| encode_frame(f).unwrap())
        .collect()
}

#[test]
fn decodes_concatenated_frames_with_their_offsets() {
    let first = encode_frame(b"header\n").unwrap();
    let data = file_of(&[b"header\n", b"a\nb\n"]);
    let decoded = decode_frames(&data).unwrap();
    assert_eq!(decoded.end, FramesEnd::Clean);
    let summary: Vec<_> = decoded
        .frames
        .iter()
        .map(|f| {
            (
                f.location.index,
                f.location.offset,
                decoded.text_of(f).to_vec(),
                f.complete,
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (0, 0, b"header\n".to_vec(), true),
            (1, first.len() as u64, b"a\nb\n".to_vec(), true),
        ]
    );
}

/// `data` cut at each of `cuts`, with a bit flipped there, and cut there then
/// zero-filled past its end.
fn damaged(data: &[u8], cuts: impl IntoIterator<Item = usize>) -> Vec<Vec<u8>> {
    let mut variants = Vec::new();
    for at in cuts {
        variants.push(data[..at].to_vec());
        let mut flipped = data.to_vec();
        flipped[at] ^= 0x40;
        variants.push(flipped);
        let mut zeros = data[..at].to_vec();
        zeros.resize(data.len() + 64, 0);
        variants.push(zeros);
    }
    variants
}

/// Every frame's text and completeness, and the end, as a comparable value.
fn outline(decoder: FrameDecoder, data: impl Compressed) -> String {
    let mut frames = Vec::new();
    let end = visit_frames_with(decoder, data, |frame| {
        frames.push((frame.location, frame.text.to_vec(), frame.complete))
    });
    format!("{frames:?} {end:?}")
}

#[test]
fn the_one_call_path_agrees_with_the_streaming_decoder() {
    let text: Vec<u8> = (0..3000)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let data = file_of(&[b"h\n", &text, b"a\nb\n", b"", b"tail\n"]);
    let mut variants = vec![data.clone()];
    variants.extend(damaged(&data, (1..data.len()).step_by(7)));
    // A frame without a declared size takes the streaming path either way.
    let mut unsized_frame = zstd::stream::raw::Encoder::new(3).unwrap();
    let mut out = vec![0u8; 256];
    let mut output = OutBuffer::around(&mut out[..]);
    let mut input = InBuffer::around(b"no size\n".as_slice());
    unsized_frame.run(&mut input, &mut output).unwrap();
    unsized_frame.finish(&mut output, true).unwrap();
    let produced = output.pos();
    let mut with_unsized = file_of(&[b"h\n"]);
    with_unsized.extend_from_slice(&out[..produced]);
    variants.push(with_unsized);
    for data in &variants {
        let fast = outline(FrameDecoder::new(true).unwrap(), data.as_slice());
        let streaming = outline(FrameDecoder::new(false).unwrap(), data.as_slice());
        assert_eq!(fast, streaming);
    }
}

/// The same outline through the two-thread pipeline.
fn pipelined_outline(data: impl Compressed + Send) -> String {
    let mut frames = Vec::new();
    let end = visit_frames_pipelined(data, &NoWork, AheadRule::WhenBehind, |frame, _| {
        frames.push((frame.location, frame.text.to_vec(), frame.complete))
    });
    format!("{frames:?} {end:?}")
}

#[test]
fn the_pipeline_hands_over_every_frame_as_decoded_inline() {
    // Enough frames of enough text for several batches, then every kind of end.
    let texts: Vec<Vec<u8>> = (0..400)
        .map(|f| {
            (0..60)
                .flat_map(|i| format!("frame {f} line {i} {}\n", "x".repeat(f % 17)).into_bytes())
                .collect()
        })
        .collect();
    let refs: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    let data = file_of(&refs);
    assert!(data.len() > PIPELINE_MIN_BYTES / 8);
    let mut variants = vec![data.clone(), Vec::new()];
    variants.extend(damaged(
        &data,
        [data.len() / 3, data.len() - 9, data.len() - 1],
    ));
    for data in &variants {
        let inline = outline(FrameDecoder::new(true).unwrap(), data.as_slice());
        assert_eq!(pipelined_outline(data.as_slice()), inline);
        // Read from a file a window at a time, as logs are.
        let window = ReadWindow::new(data.as_slice(), data.len(), 1000);
        assert_eq!(pipelined_outline(window), inline);
    }
}

/// A frame work that copies the text, to check who got what.
struct CopyText;

impl FrameWork for CopyText {
    type Done = Vec<u8>;

    fn work(&self, text: &[u8]) -> Vec<u8> {
        text.to_vec()
    }
}

#[test]
fn work_done_ahead_reaches_the_visitor_with_its_own_frame() {
    let texts: Vec<Vec<u8>> = (0..300)
        .map(|f| format!("frame {f}\n{}\n", "y".repeat(f * 7 % 500)).into_bytes())
        .collect();
    let refs: Vec<&[u8]> = texts.iter().map(Vec::as_slice).collect();
    let data = file_of(&refs);
    let mut variants = vec![data.clone()];
    variants.extend(damaged(&data, [data.len() / 2, data.len() - 5]));
    for data in &variants {
        let inline = outline(FrameDecoder::new(true).unwrap(), data.as_slice());
        for ahead in [AheadRule::Always, AheadRule::WhenBehind] {
            let mut frames = Vec::new();
            let mut worked = 0;
            let end = visit_frames_pipelined(data.as_slice(), &CopyText, ahead, |frame, done| {
                if let Some(done) = done {
                    assert!(frame.complete, "work is done for complete frames only");
                    assert_eq!(done, frame.text, "frame {}", frame.location.index);
                    worked += 1;
                }
                frames.push((frame.location, frame.text.to_vec(), frame.complete))
            });
            assert_eq!(format!("{frames:?} {end:?}"), inline);
            if ahead.always() {
                assert_eq!(worked, frames.iter().filter(|f| f.2).count());
            }
        }
    }
}

#[test]
fn frames_carry_a_checksum() {
    let frame = encode_frame(b"x\n").unwrap();
    // frame header descriptor byte: bit 2 is the content checksum flag
    assert_eq!(frame[4] & 0b100, 0b100);
}

#[test]
fn an_incomplete_final_frame_keeps_what_decoded() {
    let text: Vec<u8> = (0..2000)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let mut data = file_of(&[b"h\n", &text]);
    data.truncate(data.len() - 6);
    let decoded = decode_frames(&data).unwrap();
    assert_eq!(decoded.end, FramesEnd::Clean);
    let last = &decoded.frames[1];
    assert!(!last.complete);
    assert!(text.starts_with(decoded.text_of(last)));
}

#[test]
fn damage_and_zero_fill_are_told_apart() {
    let mut data = file_of(&[b"h\n", b"a\n"]);
    let second = encode_frame(b"h\n").unwrap().len();
    let clean_len = data.len();
    data.extend_from_slice(&[0; 64]);
    assert_eq!(
        decode_frames(&data).unwrap().end,
        FramesEnd::ZeroFilled {
            offset: clean_len as u64
        }
    );
    let mut damaged = file_of(&[b"h\n", b"abcdef\n"]);
    let last = damaged.len() - 5;
    damaged[last] ^= 0x40;
    match decode_frames(&damaged).unwrap().end {
        FramesEnd::Damaged { location, .. } => {
            assert_eq!((location.index, location.offset), (1, second as u64))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_torn_final_frame_followed_by_zeros_is_torn_not_damaged() {
    let text: Vec<u8> = (0..2000)
        .flat_map(|i| format!("line {i}\n").into_bytes())
        .collect();
    let whole = file_of(&[b"h\n", &text]);
    let second = encode_frame(b"h\n").unwrap().len();
    // the first half of the last frame reached the disk, the rest of its blocks did not
    let cut = second + (whole.len() - second) / 2;
    let mut data = whole[..cut].to_vec();
    data.resize(whole.len() + 512, 0);
    let decoded = decode_frames(&data).unwrap();
    assert!(
        matches!(decoded.end, FramesEnd::ZeroFilled { offset } if offset <= cut as u64),
        "{:?}",
        decoded.end
    );
    let last = &decoded.frames[1];
    assert_eq!(
        (last.location.offset, last.complete),
        (second as u64, false)
    );
    assert!(text.starts_with(decoded.text_of(last)));
    // zeros after bytes that cannot start a frame are still damage
    let mut garbage = whole.clone();
    garbage.extend_from_slice(b"not a frame");
    garbage.resize(garbage.len() + 512, 0);
    assert!(matches!(
        decode_frames(&garbage).unwrap().end,
        FramesEnd::Damaged { location, .. } if location.offset == whole.len() as u64
    ));
}

#[test]
fn first_line_decoding_stops_early() {
    let data = file_of(&[b"{\"type\":\"session\"}\n", b"rest\n"]);
    let (line, found) = decode_first_line(&mut data.as_slice()).unwrap();
    assert_eq!((line, found), (b"{\"type\":\"session\"}\n".to_vec(), true));
    let (partial, found) = decode_first_line(&mut &data[..5]).unwrap();
    assert_eq!((partial, found), (Vec::new(), false));
}

/// How the first block of one frame holds its literals (RFC 8878, 3.1.1): a block stored
/// or repeated whole, or, for a compressed block, its literals section's type.
fn first_literals(frame: &[u8]) -> &'static str {
    let descriptor = frame[4];
    let single_segment = descriptor & 0x20 != 0;
    let dictionary_id = [0, 1, 2, 4][usize::from(descriptor & 3)];
    let content_size = [usize::from(single_segment), 2, 4, 8][usize::from(descriptor >> 6)];
    let block = 4 + 1 + usize::from(!single_segment) + dictionary_id + content_size;
    match (frame[block] >> 1) & 3 {
        0 => "stored block",
        1 => "repeated byte",
        2 => ["raw", "one byte", "huffman", "huffman, previous table"]
            [usize::from(frame[block + 3] & 3)],
        _ => "reserved",
    }
}

/// Event-like lines, a little different each, about `bytes` long in all.
fn event_lines(bytes: usize) -> Vec<u8> {
    let mut text = Vec::new();
    let mut i = 0u64;
    while text.len() < bytes {
        let line = format!(
            "{{\"type\":\"tool/result\",\"seq\":{i},\"time\":{},\"data\":{{\"callId\":\"call_{:x}\",\"output\":\"line {i}: let value_{i} = compute({}, \\\"{}\\\");\"}}}}\n",
            1_765_000_000_000u64 + i * 37,
            i.wrapping_mul(0x9e37_79b9),
            i * i % 997,
            ["alpha", "beta", "gamma", "delta", "epsilon"][(i % 5) as usize],
        );
        text.extend_from_slice(line.as_bytes());
        i += 1;
    }
    text
}

#[test]
fn small_frames_keep_literals_raw_and_large_ones_compress_them() {
    // A step's batch: no Huffman table to build when it is read back.
    let small = event_lines(2 * 1024);
    let frame = encode_frame(&small).unwrap();
    assert_eq!(first_literals(&frame), "raw");
    assert_eq!(zstd::stream::decode_all(frame.as_slice()).unwrap(), small);
    // A large tool result: the table pays for itself, and the size matters more.
    let large = event_lines(SMALL_FRAME_TEXT + 1);
    let frame = encode_frame(&large).unwrap();
    assert_eq!(first_literals(&frame), "huffman");
    assert_eq!(zstd::stream::decode_all(frame.as_slice()).unwrap(), large);
    // The same text gives the same frame whatever was compressed before it.
    assert_eq!(encode_frame(&small).unwrap(), encode_frame(&small).unwrap());
    let after_small = encode_frame(&large).unwrap();
    assert_eq!(after_small, frame);
}
