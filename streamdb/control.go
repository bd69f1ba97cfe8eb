package streamdb

import "github.com/entityd/entityd/internal/rawjson"

// Control renders a State Protocol control message ("snapshot-start", "snapshot-end",
// "reset"), optionally stamped with an offset.
func Control(control string, offset *Offset) []byte {
	var h rawjson.Object
	h.String("control", control)
	if offset != nil {
		h.String("offset", offset.String())
	}
	var o rawjson.Object
	o.Raw("headers", h.Bytes())
	return o.Bytes()
}
