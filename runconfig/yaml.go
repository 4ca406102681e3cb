package runconfig

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// toJSON returns a config file's text as JSON: a .yaml or .yml file is
// read as YAML (go.yaml.in/yaml/v3, the YAML project's continuation of
// gopkg.in/yaml.v3) and re-encoded, so that both go through the same key
// checks; any other file is JSON already.
func toJSON(path string, b []byte) ([]byte, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
	default:
		return b, nil
	}
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (keys must be strings)", path, err)
	}
	return j, nil
}
