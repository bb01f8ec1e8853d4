package main

import "errors"

var errTruncated = errors.New("truncated module")

func uleb(buf []byte) (value uint32, n int, err error) {
	var shift uint
	for i, b := range buf {
		value |= uint32(b&0x7f) << shift
		if b&0x80 == 0 {
			return value, i + 1, nil
		}
		shift += 7
	}
	return 0, 0, errTruncated
}

func appendULEB(out []byte, v uint32) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func appendSLEB(out []byte, v int64) []byte {
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

// reader walks a section body; the first error sticks and later reads return zeros.
type reader struct {
	buf []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.buf) == 0 {
		r.err = errTruncated
		return 0
	}
	b := r.buf[0]
	r.buf = r.buf[1:]
	return b
}

func (r *reader) uleb() uint32 {
	if r.err != nil {
		return 0
	}
	v, n, err := uleb(r.buf)
	if err != nil {
		r.err = err
		return 0
	}
	r.buf = r.buf[n:]
	return v
}

func (r *reader) sleb() int64 {
	var value int64
	var shift uint
	for {
		b := r.byte()
		if r.err != nil {
			return 0
		}
		value |= int64(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				value |= -1 << shift
			}
			return value
		}
	}
}

func (r *reader) bytes(n uint32) []byte {
	if r.err != nil || uint32(len(r.buf)) < n {
		r.err = errTruncated
		return nil
	}
	b := r.buf[:n]
	r.buf = r.buf[n:]
	return b
}

func (r *reader) limits() {
	flags := r.byte()
	r.uleb()
	if flags&1 != 0 {
		r.uleb()
	}
}
