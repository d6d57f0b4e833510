public enum CodeGenPlaceholder {}
