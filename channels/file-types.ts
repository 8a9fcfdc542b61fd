/** Image types every platform shows inline as a photo; other images travel as documents. */
const PHOTO_TYPES = new Set(["image/jpeg", "image/png", "image/webp"]);

/** True when a file of this (sniffed) type is shown as a photo. */
export function isPhotoType(mimeType: string): boolean {
  return PHOTO_TYPES.has(mimeType);
}
