package composer

// ValidCommandName reports whether s is a command name: a lowercase ASCII letter, then lowercase
// letters or digits, then zero or more groups of one hyphen followed by one or more
// lowercase letters or digits (the reference's ^[a-z][a-z0-9]*(?:-[a-z0-9]+)*$).
// Names carry no leading slash.
func ValidCommandName(s string) bool {
	if s == "" || !isLower(s[0]) {
		return false
	}
	prevHyphen := false
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case isLower(c) || isDigit(c):
			prevHyphen = false
		case c == '-':
			if prevHyphen {
				return false
			}
			prevHyphen = true
		default:
			return false
		}
	}
	return !prevHyphen
}

// ValidArgumentName reports whether s is an argument name: a lowercase ASCII letter
// followed by any mix of ASCII letters, digits and underscores (^[a-z][a-zA-Z0-9_]*$).
func ValidArgumentName(s string) bool {
	if s == "" || !isLower(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(isLower(c) || (c >= 'A' && c <= 'Z') || isDigit(c) || c == '_') {
			return false
		}
	}
	return true
}

func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
