package image

// Archive is archive, for image_test's look at the tar Build imports.
var Archive = archive
